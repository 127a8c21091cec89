"""Experiments that drive repeated auctions and return tidy pandas tables (THEMIS §6.3 truth-telling)."""
