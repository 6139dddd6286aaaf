"""Reading a spec: the strict YAML loader, JSON Schema validation with defaults, and the hardware catalog the
spec may override. Knows the document, never a domain."""
