"""Background jobs with progress, cancellation and records that survive a restart."""

from app.jobs.job import INTERRUPTED_MESSAGE, Job, JobCancelled, JobStatus, Progress
from app.jobs.runner import JobRunner

__all__ = ["INTERRUPTED_MESSAGE", "Job", "JobCancelled", "JobRunner", "JobStatus", "Progress"]
