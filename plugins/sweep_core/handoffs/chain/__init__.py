"""sweep_hf_chain: the HF-only SFT chain, three legs per cell, advanced one leg per sweep."""
