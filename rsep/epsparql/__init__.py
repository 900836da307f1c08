"""EP-SPARQL (001): event patterns (SEQ, AND, OR, EQUALS, OPTIONALSEQ, ...) over a stream of
timed triples, with background knowledge and RDFS.

``reference`` reads like the paper's equations; ``runtime`` is the incremental engine
(``delta``: differences per instant; ``rewrites``: FILTER pushing, horizons, certainty;
``matcher``: occurrences and BGP matching; ``rdfs``: the RDFS closure; ``policy``: selection
and consumption), ``etalis`` the ETALIS-compatible mode.
"""
