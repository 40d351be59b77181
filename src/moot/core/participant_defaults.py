"""What moot records of a participant that did not say: a stdlib-only module, so that the agent tools, the MCP
server, the engine and the ledger name it alike without importing each other."""

UNKNOWN_MODEL = "unknown-model"  # the duel seed's MODEL_ID "if unknown ... do not invent model metadata"
