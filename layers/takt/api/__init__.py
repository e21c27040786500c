"""The job API: an HTTP API resolver (Powertools) over the job service."""
