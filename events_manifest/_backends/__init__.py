"""The built-in manifest backends: in-memory, SQLite and DynamoDB."""
