"""Background jobs with progress."""

from app.jobs.runner import Job, JobCancelled, JobRunner, Progress

__all__ = ["Job", "JobCancelled", "JobRunner", "Progress"]
