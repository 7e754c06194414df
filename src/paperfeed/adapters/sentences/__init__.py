"""Sentences of abstracts: the segmenter and the role classifier (:mod:`paperfeed.domain.sentences`)."""
