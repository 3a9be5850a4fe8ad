# Golden values of the clinical calibration report, computed by R's rms::val.prob.
#
# Run from the repository root (Debian: apt-get install r-base-core r-cran-rms):
#     Rscript tests/golden/make_clinical_golden.R
# It writes seeded data sets to tests/golden/clinical/<name>.csv (y, p and R's lowess
# of y on p at each row), reads each back (so R and the tests see the same doubles) and
# writes tests/golden/clinical/golden.json. The tests read these files; they never run R.
suppressPackageStartupMessages({library(rms); library(jsonlite)})

out <- file.path("tests", "golden", "clinical")
dir.create(out, showWarnings = FALSE, recursive = TRUE)

simulate <- function(seed, n, true_logit, rounding = NA) {
  set.seed(seed)
  p <- rbeta(n, 2, 5)
  if (!is.na(rounding)) p <- pmin(pmax(round(p, rounding), 0.01), 0.99)
  y <- rbinom(n, 1, plogis(true_logit(qlogis(p))))
  data.frame(y = y, p = p)
}

sets <- list(
  calibrated = simulate(11, 1000, function(l) l),
  over_confident = simulate(12, 1000, function(l) 0.6 * l - 0.4),  # slope < 1
  under_predicting = simulate(13, 1000, function(l) l + 0.5),       # risks too low
  small = simulate(14, 200, function(l) l),
  ties = simulate(15, 1000, function(l) 0.2 + 1.3 * l + 0.15 * l^2, rounding = 2))

write_set <- function(name, frame) {
  path <- file.path(out, paste0(name, ".csv"))
  text <- data.frame(y = frame$y, p = sprintf("%.17g", frame$p))
  write.csv(text, path, row.names = FALSE, quote = FALSE)
  read.csv(path)
}

golden <- list()
for (name in names(sets)) {
  frame <- write_set(name, sets[[name]])
  y <- frame$y; p <- frame$p
  stats <- val.prob(p, y, pl = FALSE)
  smooth <- lowess(p, y, iter = 0)
  at_rows <- approx(smooth, xout = p, ties = mean)$y
  errors <- abs(p - at_rows)
  inside <- p > 0 & p < 1
  free <- glm(y ~ qlogis(p), family = binomial, subset = inside,
              control = glm.control(epsilon = 1e-14, maxit = 100))
  large <- glm(y ~ 1, offset = qlogis(p), family = binomial, subset = inside,
               control = glm.control(epsilon = 1e-14, maxit = 100))
  frame$r_lowess <- sprintf("%.17g", at_rows)
  frame$p <- sprintf("%.17g", frame$p)
  write.csv(frame, file.path(out, paste0(name, ".csv")), row.names = FALSE, quote = FALSE)
  golden[[name]] <- list(
    n = length(y), events = sum(y),
    intercept = unname(stats["Intercept"]), slope = unname(stats["Slope"]),
    spiegelhalter_z = unname(stats["S:z"]), spiegelhalter_p = unname(stats["S:p"]),
    emax = unname(stats["Emax"]), e90 = unname(stats["E90"]), eavg = unname(stats["Eavg"]),
    e50 = median(errors),
    glm_intercept = unname(coef(free)[1]), glm_slope = unname(coef(free)[2]),
    glm_intercept_se = unname(sqrt(diag(vcov(free)))[1]),
    glm_slope_se = unname(sqrt(diag(vcov(free)))[2]),
    calibration_in_the_large = unname(coef(large)[1]),
    calibration_in_the_large_se = unname(sqrt(vcov(large)[1, 1])))
}

# the example file of the product: p has exact zeros (left out of the logistic fits)
example <- read.csv(file.path("app", "examples", "default_nb.csv"))
y <- example$y_true; p <- example$y_prob
stats <- suppressWarnings(val.prob(p, y, pl = FALSE))
inside <- p > 0 & p < 1
large <- glm(y ~ 1, offset = qlogis(p), family = binomial, subset = inside,
             control = glm.control(epsilon = 1e-14, maxit = 100))
errors <- abs(p - approx(lowess(p, y, iter = 0), xout = p, ties = mean)$y)
golden[["default_nb"]] <- list(
  n = length(y), events = sum(y), n_logistic = sum(inside),
  intercept = unname(stats["Intercept"]), slope = unname(stats["Slope"]),
  spiegelhalter_z = unname(stats["S:z"]), spiegelhalter_p = unname(stats["S:p"]),
  emax = unname(stats["Emax"]), e90 = unname(stats["E90"]), eavg = unname(stats["Eavg"]),
  e50 = median(errors), calibration_in_the_large = unname(coef(large)[1]),
  calibration_in_the_large_se = unname(sqrt(vcov(large)[1, 1])))

golden[["_meta"]] <- list(
  r = R.version.string, rms = as.character(packageVersion("rms")),
  made_by = "tests/golden/make_clinical_golden.R")
write(toJSON(golden, auto_unbox = TRUE, digits = I(17), pretty = TRUE),
      file.path(out, "golden.json"))
