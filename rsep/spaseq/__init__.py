"""SPASEQ (002): sequences of graph pattern matchings over RDF graph streamsets.

``reference`` transcribes the definitions (the oracle); ``nfa`` is the NFA_scep
engine that runs registered queries, ``chain`` its typed engine for strict chains,
``gpm`` the GPM(G_e, P_theta, H) evaluator, ``runtime`` the glue to the engine loop,
``explain`` draws the automaton.
"""
