"""The ledger: domain verbs over the provider seam, and the facade that runs them."""
