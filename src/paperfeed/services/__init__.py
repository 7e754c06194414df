"""Services: orchestrate the domain's ports into the things users ask for. No I/O details here."""
