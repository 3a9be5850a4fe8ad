"""Request and response models of the REST API, one module per concept."""

from app.schemas.clinical import ClinicalReport
from app.schemas.datasets import (
    DatasetRoles,
    DatasetSummary,
    ExternalDatasetRequest,
    InferredRoles,
    RolesRequest,
    StagedUpload,
)
from app.schemas.decision import DecisionCurve, RecalibrationNetBenefit
from app.schemas.errors import ErrorBody, ErrorResponse
from app.schemas.heterogeneity import HeterogeneityRequest, SupportRequest
from app.schemas.insights import (
    ComparedModel,
    ModelComparison,
    ModelDifference,
    ModelMeasure,
    RollingRecalibration,
    RollingWindow,
    SubgroupRequest,
    Timeline,
    TimelineWindow,
)
from app.schemas.jobs import JobAccepted, JobResponse
from app.schemas.local import CurveRequest, LandscapeRequest, RepresentationRequest
from app.schemas.meta import Health
from app.schemas.metrics import (
    BinFreeMeasure,
    BinSensitivity,
    CalibrationTestBody,
    CumulativeTestBody,
    MeasureEstimate,
    MetricsResponse,
    ReliabilityDiagram,
    ReliabilityResponse,
    SmoothDiagram,
    ViewTestBody,
    Weighting,
)
from app.schemas.models import DocumentInputs, ModelInputs, RecalibratorDocument, SavedModel
from app.schemas.parameters import MAX_ROW_COUNT, RowCount, Seed
from app.schemas.recalibrations import (
    CandidateDiagram,
    ComparisonColumn,
    ComparisonRow,
    ComparisonValue,
    FailedMethod,
    FittedRecalibration,
    MethodInfo,
    MethodName,
    MethodRequest,
    NllDifference,
    Recalibration,
    RecalibrationBatch,
    RecalibrationComparison,
    RecalibrationRequest,
    Recommendation,
)
from app.schemas.variables import (
    RankedVariable,
    VariableBins,
    VariableCurves,
    VariableDetail,
    VariableRanking,
    VariableValue,
)

__all__ = [
    "MAX_ROW_COUNT", "BinFreeMeasure", "BinSensitivity", "CalibrationTestBody",
    "CandidateDiagram", "ClinicalReport", "ComparedModel", "ComparisonColumn", "ComparisonRow",
    "ComparisonValue", "CumulativeTestBody", "CurveRequest", "DatasetRoles", "DatasetSummary",
    "DecisionCurve",
    "DocumentInputs", "ErrorBody", "ErrorResponse", "ExternalDatasetRequest", "FailedMethod",
    "FittedRecalibration", "Health", "HeterogeneityRequest", "InferredRoles", "JobAccepted",
    "JobResponse", "LandscapeRequest", "MeasureEstimate", "MethodInfo", "MethodName",
    "MethodRequest", "MetricsResponse", "ModelComparison", "ModelDifference", "ModelInputs",
    "ModelMeasure", "NllDifference", "RankedVariable", "Recalibration", "RecalibrationBatch",
    "RecalibrationComparison", "RecalibrationNetBenefit", "RecalibrationRequest",
    "RecalibratorDocument", "Recommendation", "ReliabilityDiagram", "ReliabilityResponse",
    "RepresentationRequest", "RolesRequest", "RollingRecalibration", "RollingWindow",
    "RowCount", "SavedModel", "Seed", "SmoothDiagram", "StagedUpload", "SubgroupRequest",
    "SupportRequest", "Timeline", "TimelineWindow", "VariableBins", "VariableCurves",
    "VariableDetail", "VariableRanking", "VariableValue", "ViewTestBody", "Weighting",
]
