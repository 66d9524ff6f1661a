"""An enriched line decoded as the reference's Analytics SDK decodes it (`event`); JSON as the
reference reads and prints it (`circe`), its parser's words for what is not JSON (`jawn`), and
numbers and instants as its JVM renders them (`jvm`)."""
