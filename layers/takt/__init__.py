"""takt: a distributed job scheduler that runs serverless on AWS."""
