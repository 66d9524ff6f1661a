"""An enriched line decoded as the reference's Analytics SDK decodes it, one event at a time
(`event`) or column by column over an Arrow batch (`columnar`); JSON as the reference reads and
prints it (`circe`) and its parser's words for what is not JSON (`jawn`)."""
