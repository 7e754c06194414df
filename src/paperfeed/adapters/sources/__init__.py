"""Paper sources: files, arXiv OAI-PMH, the arXiv API and Hugging Face Daily Papers."""
