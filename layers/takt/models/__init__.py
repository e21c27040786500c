"""takt's data: API models (the public contract) and table records (what DynamoDB holds)."""
