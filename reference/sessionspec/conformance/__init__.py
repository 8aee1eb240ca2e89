"""The conformance oracle: the SCP v0 protocol, a testee over our implementations, the runner, vectors."""
