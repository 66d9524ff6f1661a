"""A job's run as every tool makes one: its output places checked, its folders claimed, its files
read and written through one storage interface, its named steps, its commit."""
