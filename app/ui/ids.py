"""Component ids the page shell and every page share (each page owns its own ids)."""

URL = "url"
DATASET_STORE = "dataset-store"
PAGE = "page-content"
NAV = "nav"
DATASET_PICKER = "dataset-picker"
SAMPLE_BANNER = "sample-banner"
SIGN_OUT = "sign-out"
CALLBACK_ERROR = "callback-error"  # filled by app.ui.callback_errors when a callback fails
