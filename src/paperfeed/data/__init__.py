"""Data shipped with paperfeed: the training set of the sentence-role classifier (see NOTICE.txt)."""
