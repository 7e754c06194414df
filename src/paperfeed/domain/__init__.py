"""Pure, typed core of paperfeed: models, identifiers, merge rules and the ports adapters implement.

Nothing in here does I/O or imports another paperfeed package.
"""
