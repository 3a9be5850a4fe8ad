/* Recalibrate page, "Apply a saved recalibrator": imports the chosen model JSON with
   POST /api/v1/models, streams the chosen data file to POST /api/v1/models/{id}/apply
   with XMLHttpRequest (multipart, no base64 in browser memory), shows upload progress and
   saves the corrected file the server returns. */
(function () {
  "use strict";
  var MODEL_BROWSE = "apply-model-browse", DATA_BROWSE = "apply-data-browse";
  var MODEL_NAME = "apply-model-name", DATA_NAME = "apply-data-name";
  var FORMAT = "apply-format", BUTTON = "apply-button", STATUS = "apply-status";
  var WRAPPER = "apply-progress", BAR = "apply-progress-bar";
  var INPUTS = {model: "apply-model-file", data: "apply-data-file"};
  var chosen = {model: null, data: null};

  function byId(id) { return document.getElementById(id); }

  function showStatus(text, isError) {
    var status = byId(STATUS);
    if (!status) { return; }
    status.textContent = text;
    status.className = "note " + (isError ? "note-error" : "note-info");
  }

  function showProgress(fraction, text) {
    var wrapper = byId(WRAPPER), bar = byId(BAR);
    if (!wrapper || !bar) { return; }
    wrapper.style.display = "";
    bar.style.width = Math.round(fraction * 100) + "%";
    var label = wrapper.querySelector(".progress-text");
    if (label) { label.textContent = text; }
  }

  function errorMessage(request, text) {
    try {
      var body = JSON.parse(text);
      if (body && body.error && body.error.message) { return body.error.message; }
    } catch (ignored) { /* not JSON */ }
    return request.status + " " + request.statusText;
  }

  function fileName(request, fallback) {
    var header = request.getResponseHeader("Content-Disposition") || "";
    var match = /filename="([^"]+)"/.exec(header);
    return match ? match[1] : fallback;
  }

  function save(blob, name) {
    var url = URL.createObjectURL(blob);
    var link = document.createElement("a");
    link.href = url;
    link.download = name;
    link.id = "apply-result-link";
    document.body.appendChild(link);
    link.click();
    setTimeout(function () { URL.revokeObjectURL(url); link.remove(); }, 60000);
  }

  function applyModel(modelId, data, format) {
    var form = new FormData();
    form.append("file", data, data.name);
    var request = new XMLHttpRequest();
    request.open("POST", "/api/v1/models/" + encodeURIComponent(modelId) + "/apply?format=" +
      encodeURIComponent(format));
    request.responseType = "blob";
    request.upload.onprogress = function (event) {
      if (event.lengthComputable) {
        showProgress(event.loaded / event.total, "uploading " + data.name + ": " +
          Math.round(100 * event.loaded / event.total) + "%");
      }
    };
    request.upload.onload = function () { showProgress(1, "correcting " + data.name + "…"); };
    request.onload = function () {
      if (request.status === 200) {
        var name = fileName(request, "calibrated." + format);
        save(request.response, name);
        showProgress(1, "done");
        showStatus("Applied the recalibrator to " + data.name + "; downloaded " + name + " (" +
          request.response.size.toLocaleString() + " bytes).", false);
        return;
      }
      request.response.text().then(function (text) {
        showProgress(1, "rejected");
        showStatus("The file was rejected: " + errorMessage(request, text), true);
      });
    };
    request.onerror = function () { showStatus("The connection to the server failed.", true); };
    showProgress(0, "uploading " + data.name + "…");
    request.send(form);
  }

  function start() {
    if (!chosen.model || !chosen.data) {
      showStatus("Choose a model JSON and a data file first.", true);
      return;
    }
    var select = byId(FORMAT);
    var format = select && select.value === "parquet" ? "parquet" : "csv";
    var model = chosen.model, data = chosen.data;
    var request = new XMLHttpRequest();
    request.open("POST", "/api/v1/models");
    request.setRequestHeader("Content-Type", "application/json");
    request.onload = function () {
      if (request.status !== 201) {
        showStatus("The model was rejected: " + errorMessage(request, request.responseText),
          true);
        return;
      }
      var body = JSON.parse(request.responseText);
      showStatus("Imported " + body.name + " (" + body.id + "); applying it…", false);
      applyModel(body.id, data, format);
    };
    request.onerror = function () { showStatus("The connection to the server failed.", true); };
    showStatus("Importing " + model.name + "…", false);
    request.send(model);  /* the File itself: sent as it is, not read into a string */
  }

  /* Dash has no file <input>; the browse buttons open ones made here, kept in the page so
     that browser automation can find them (input#apply-model-file, input#apply-data-file). */
  function fileInput(kind) {
    var input = byId(INPUTS[kind]);
    if (!input) {
      input = document.createElement("input");
      input.type = "file";
      input.id = INPUTS[kind];
      input.accept = kind === "model" ? ".json,application/json" :
        ".csv,.tsv,.txt,.gz,.parquet,.pq";
      input.style.position = "absolute";
      input.style.left = "-10000px";
      input.addEventListener("change", function () {
        if (input.files.length) {
          chosen[kind] = input.files[0];
          var label = byId(kind === "model" ? MODEL_NAME : DATA_NAME);
          if (label) { label.textContent = input.files[0].name; }
        }
      });
      document.body.appendChild(input);
    }
    return input;
  }

  function makeInputs() { fileInput("model"); fileInput("data"); }

  document.addEventListener("click", function (event) {
    var target = event.target && event.target.closest ? event.target : null;
    if (!target) { return; }
    if (target.closest("#" + MODEL_BROWSE)) { fileInput("model").click(); }
    else if (target.closest("#" + DATA_BROWSE)) { fileInput("data").click(); }
    else if (target.closest("#" + BUTTON)) { start(); }
  });
  document.addEventListener("DOMContentLoaded", makeInputs);
  if (document.readyState !== "loading") { makeInputs(); }
})();
