"""Complex event processing over RDF graph streams: SPASEQ (002).

``spaseq_reference`` transcribes the definitions (the oracle); ``nfa`` is the
NFA_scep engine that runs registered queries; ``explain`` draws its automaton.
"""
