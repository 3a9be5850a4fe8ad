/* Streams the chosen or dropped file to POST /api/v1/uploads with XMLHttpRequest
   (multipart, no base64 in browser memory), shows upload progress, and hands the
   server's answer to Dash through dash_clientside.set_props. */
(function () {
  "use strict";
  var ZONE = "upload-dropzone", BROWSE = "upload-browse";
  var WRAPPER = "upload-progress", BAR = "upload-progress-bar", STORE = "upload-response";

  function showProgress(fraction, text) {
    var wrapper = document.getElementById(WRAPPER);
    var bar = document.getElementById(BAR);
    if (!wrapper || !bar) { return; }
    wrapper.style.display = "";
    bar.style.width = Math.round(fraction * 100) + "%";
    var label = wrapper.querySelector(".progress-text");
    if (label) { label.textContent = text; }
  }

  function report(status, body) {
    window.dash_clientside.set_props(STORE, {data: {status: status, body: body, at: Date.now()}});
  }

  function upload(file) {
    if (!file) { return; }
    var form = new FormData();
    form.append("file", file, file.name);
    var request = new XMLHttpRequest();
    request.open("POST", "/api/v1/uploads");
    request.upload.onprogress = function (event) {
      if (event.lengthComputable) {
        showProgress(event.loaded / event.total, "uploading " + file.name + ": " +
          Math.round(100 * event.loaded / event.total) + "%");
      }
    };
    request.upload.onload = function () { showProgress(1, "parsing " + file.name + "…"); };
    request.onload = function () {
      var body;
      try { body = JSON.parse(request.responseText); }
      catch (error) { body = {error: {message: request.status + " " + request.statusText}}; }
      showProgress(1, request.status === 201 ? "uploaded " + file.name : "rejected");
      report(request.status, body);
    };
    request.onerror = function () {
      report(0, {error: {message: "the connection to the server failed."}});
    };
    showProgress(0, "uploading " + file.name + "…");
    request.send(form);
  }

  function zoneOf(target) { return target && target.closest ? target.closest("#" + ZONE) : null; }

  /* Dash has no file <input>; the browse button opens one made here, kept in the page so
     that browser automation can find it (input#upload-file). */
  function fileInput() {
    var input = document.getElementById("upload-file");
    if (!input) {
      input = document.createElement("input");
      input.type = "file";
      input.id = "upload-file";
      input.accept = ".csv,.tsv,.txt,.gz,.parquet,.pq";
      input.style.position = "absolute";
      input.style.left = "-10000px";
      input.addEventListener("change", function () {
        if (input.files.length) { upload(input.files[0]); }
        input.value = "";
      });
      document.body.appendChild(input);
    }
    return input;
  }
  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest ? event.target.closest("#" + BROWSE) : null;
    if (button) { fileInput().click(); }
  });
  document.addEventListener("DOMContentLoaded", fileInput);
  if (document.readyState !== "loading") { fileInput(); }
  document.addEventListener("dragover", function (event) {
    var zone = zoneOf(event.target);
    if (zone) { event.preventDefault(); zone.classList.add("dragging"); }
  });
  document.addEventListener("dragleave", function (event) {
    var zone = zoneOf(event.target);
    if (zone) { zone.classList.remove("dragging"); }
  });
  document.addEventListener("drop", function (event) {
    var zone = zoneOf(event.target);
    if (zone) {
      event.preventDefault();
      zone.classList.remove("dragging");
      if (event.dataTransfer && event.dataTransfer.files.length) {
        upload(event.dataTransfer.files[0]);
      }
    }
  });
})();
