"""Component ids of the Dash UI, in one place (STYLE rule 12)."""

# shell
URL = "url"
DATASET_STORE = "dataset-store"
PAGE = "page-content"
NAV = "nav"
DATASET_PICKER = "dataset-picker"

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
ROLE_ID = "role-id"
ROLE_OPTIONS = "role-options"
ROLE_NAME = "role-name"
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

# recalibrate page
METHOD_SELECT = "method-select"
FIT_BUTTON = "fit-button"
FIT_JOB = "fit-job"
FIT_POLL = "fit-poll"
FIT_PROGRESS = "fit-progress"
FIT_STATUS = "fit-status"
RECAL_RESULTS = "recal-results"
RECAL_GRAPH = "recal-graph"
RECAL_TABLE = "recal-table"
RECAL_DOWNLOADS = "recal-downloads"

# variables page (add its ids here)

# local page (add its ids here)

# heterogeneity page (add its ids here)
