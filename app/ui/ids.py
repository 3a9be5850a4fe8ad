"""Component ids of the Dash UI, in one place."""

# shell
URL = "url"
DATASET_STORE = "dataset-store"
PAGE = "page-content"
NAV = "nav"
DATASET_PICKER = "dataset-picker"
SAMPLE_BANNER = "sample-banner"
SIGN_OUT = "sign-out"
CALLBACK_ERROR = "callback-error"  # filled by app.ui.callback_errors when a callback fails

# data page
UPLOAD_DROPZONE = "upload-dropzone"  # also used by assets/upload.js
UPLOAD_BROWSE = "upload-browse"  # also used by assets/upload.js
UPLOAD_PROGRESS = "upload-progress"  # also used by assets/upload.js
UPLOAD_PROGRESS_BAR = "upload-progress-bar"  # also used by assets/upload.js
UPLOAD_RESPONSE = "upload-response"  # set by assets/upload.js via dash_clientside.set_props
UPLOAD_STATUS = "upload-status"
ROLES_PANEL = "roles-panel"
ROLE_LABEL = "role-label"
ROLE_PROBABILITIES = "role-probabilities"
ROLE_FEATURES = "role-features"
ROLE_SPLIT = "role-split"
ROLE_TIME = "role-time"
ROLE_MODELS = "role-models"
ROLE_ID = "role-id"
ROLE_OPTIONS = "role-options"
ROLE_NAME = "role-name"
ROLE_MESSAGES = "role-messages"  # what still stops the dataset, and the inference's guesses
ROLE_ASSIGNED = "role-assigned"  # columns holding a role other than feature, before a change
PREVIEW_TABLE = "preview-table"
CONFIRM_BUTTON = "confirm-roles"
CONFIRM_STATUS = "confirm-status"
DATASET_LIST = "dataset-list"
DELETE_DATASET = "delete-dataset"

# overview page
VIEW_SELECT = "view-select"
BINS_SLIDER = "bins-slider"
BINNING_SELECT = "binning-select"
SUBSET_SELECT = "subset-select"
MEASURE_CARDS = "measure-cards"
RELIABILITY_GRAPH = "reliability-graph"
CLASS_SELECT = "class-select"
OVERVIEW_NOTE = "overview-note"
MEASURES_TABLE = "measures-table"
CALIBRATION_TEST = "calibration-test"
MEASURES_JOB = "measures-job"
MEASURES_POLL = "measures-poll"
MEASURES_PROGRESS = "measures-progress"
SMOOTH_GRAPH = "smooth-graph"
BINS_GRAPH = "bins-graph"

# recalibrate page
METHOD_SELECT = "method-select"
FIT_BUTTON = "fit-button"
FIT_JOB = "fit-job"
FIT_POLL = "fit-poll"
FIT_PROGRESS = "fit-progress"
FIT_STATUS = "fit-status"
RECAL_RESULTS = "recal-results"
RECAL_GRAPH = "recal-graph"
RECAL_VIEW = "recal-view"  # the overlaid diagram's view (binary: positive class too)
RECAL_COMPARISON_STORE = "recal-comparison-store"
RECAL_TABLE = "recal-table"
RECAL_DOWNLOADS = "recal-downloads"
RECAL_VARIABLE = "recal-variable"
RECAL_FEATURES = "recal-features"
RECAL_LECE_Q = "recal-lece-q"
RECAL_LECE_T = "recal-lece-t"
RECAL_BINS = "recal-bins"
RECAL_LORE_GAMMA = "recal-lore-gamma"
RECAL_OPTIONS_NOTE = "recal-options-note"
RECAL_METHOD_PROGRESS = "recal-method-progress"
RECAL_RECOMMENDATION = "recal-recommendation"
RECAL_COST = "recal-cost"  # the cost estimate of the chosen methods
RECAL_NLL_GRAPH = "recal-nll-graph"
RECAL_RESULT_STORE = "recal-result-store"
RECAL_EXTRA_COLUMNS = "recal-extra-columns"
RECAL_EXTRA_LABEL = "recal-extra-label"
APPLY_MODEL_BROWSE = "apply-model-browse"  # also used by assets/apply.js
APPLY_MODEL_NAME = "apply-model-name"  # also used by assets/apply.js
APPLY_DATA_BROWSE = "apply-data-browse"  # also used by assets/apply.js
APPLY_DATA_NAME = "apply-data-name"  # also used by assets/apply.js
APPLY_FORMAT = "apply-format"  # also used by assets/apply.js
APPLY_BUTTON = "apply-button"  # also used by assets/apply.js
APPLY_PROGRESS = "apply-progress"  # also used by assets/apply.js
APPLY_PROGRESS_BAR = "apply-progress-bar"  # also used by assets/apply.js
APPLY_STATUS = "apply-status"  # also used by assets/apply.js

# variables page (add its ids here)
VAR_SUBSET = "var-subset"
VAR_BINS = "var-bins"
VAR_PERMUTATIONS = "var-permutations"
VAR_JOB = "var-job"
VAR_POLL = "var-poll"
VAR_PROGRESS = "var-progress"
VAR_STATUS = "var-status"
VAR_RANKING = "var-ranking"  # dcc.Store holding the ranking JSON
VAR_TABLE = "var-table"
VAR_BARS = "var-bars"
VAR_SELECT = "var-select"
VAR_SCALE = "var-scale"
VAR_SPAN = "var-span"
VAR_RANGE = "var-range"  # where the curves are drawn: 5-95, 1-99 or all
VAR_VIEW = "var-view"
VAR_VIEW_NOTE = "var-view-note"
VAR_CURVE = "var-curve"
VAR_NOTE = "var-note"
VAR_CATEGORY_TABLE = "var-category-table"
VAR_CATEGORIES = "var-categories"  # the per-category table inside VAR_CATEGORY_TABLE

# local page (add its ids here)
LOCAL_FEATURES = "local-features"
LOCAL_REDUCER = "local-reducer"
LOCAL_COMPONENTS = "local-components"
LOCAL_EMBEDDING_COLUMNS = "local-embedding-columns"
LOCAL_EMBEDDING_CONTROL = "local-embedding-control"
LOCAL_GAMMA = "local-gamma"  # log10 of the bandwidth
LOCAL_GAMMA_TEXT = "local-gamma-text"
LOCAL_GAMMA_HINT = "local-gamma-hint"
LOCAL_COST = "local-cost"  # the cost estimate of the chosen representation
LOCAL_VIEW_NOTE = "local-view-note"
LOCAL_BINS = "local-bins"
LOCAL_SUBSET = "local-subset"
LOCAL_SAMPLE = "local-sample"
LOCAL_RUN = "local-run"
LOCAL_CANCEL = "local-cancel"
LOCAL_PROGRESS = "local-progress"
LOCAL_STATUS = "local-status"
LOCAL_JOB = "local-job"
LOCAL_POLL = "local-poll"
LOCAL_RESULT = "local-result"  # dcc.Store: the parameters and headline numbers shown
LOCAL_CURVE = "local-curve"  # dcc.Store: the MLCE curve shown
LOCAL_RESULTS = "local-results"
LOCAL_SUMMARY = "local-summary"
LOCAL_CARDS = "local-cards"
LOCAL_COLOUR = "local-colour"
LOCAL_BIN = "local-bin"
LOCAL_MAP = "local-map"
LOCAL_CDF = "local-cdf"
LOCAL_CURVES = "local-curves"
LOCAL_SELECTION = "local-selection"
LOCAL_SELECTION_TABLE = "local-selection-table"

# heterogeneity page (add its ids here)
HH_RADIUS = "hh-radius"
HH_SAMPLE = "hh-sample"
HH_ALL_ROWS = "hh-all-rows"
HH_SEED = "hh-seed"
HH_CALIBRATION = "hh-calibration-sample"
HH_FEATURES = "hh-features"
HH_RUN = "hh-run"
HH_CANCEL = "hh-cancel"
HH_JOB = "hh-job"
HH_POLL = "hh-poll"
HH_PROGRESS = "hh-progress"
HH_STATUS = "hh-status"
HH_RESULTS = "hh-results"
HH_CARDS = "hh-cards"
HH_MAP_GRAPH = "hh-map-graph"
HH_CONFIDENCE_GRAPH = "hh-confidence-graph"
SUPPORT_BATCH = "support-batch"
SUPPORT_RUN = "support-run"
SUPPORT_CANCEL = "support-cancel"
SUPPORT_JOB = "support-job"
SUPPORT_POLL = "support-poll"
SUPPORT_PROGRESS = "support-progress"
SUPPORT_STATUS = "support-status"
SUPPORT_RESULTS = "support-results"
SUPPORT_SHIFT = "support-shift"
SUPPORT_HISTOGRAM = "support-histogram"
SUPPORT_TABLE = "support-table"

# subgroups page
SUB_FEATURES = "sub-features"
SUB_BINS = "sub-bins"
SUB_SUPPORT = "sub-support"
SUB_PAIRS = "sub-pairs"
SUB_SUBSET = "sub-subset"
SUB_VIEW = "sub-view"
SUB_RUN = "sub-run"
SUB_JOB = "sub-job"
SUB_POLL = "sub-poll"
SUB_PROGRESS = "sub-progress"
SUB_STATUS = "sub-status"
SUB_CANCEL = "sub-cancel"
SUB_RESULTS = "sub-results"
SUB_GRID = "sub-grid"
SUB_DIAGRAMS = "sub-diagrams"
SUB_GRAPH = "sub-graph"

# over-time page
TIME_COLUMN = "time-column"
TIME_FREQ = "time-freq"
TIME_METHOD = "time-method"
TIME_VIEW = "time-view"
TIME_STATUS = "time-status"
TIME_GRAPH = "time-graph"
TIME_ROLLING = "time-rolling"

# compare page
COMPARE_REFERENCE = "compare-reference"
COMPARE_VIEW = "compare-view"
COMPARE_STATUS = "compare-status"
COMPARE_GRID = "compare-grid"
COMPARE_GRAPH = "compare-graph"
