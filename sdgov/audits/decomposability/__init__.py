"""The black-box decomposability test (Houssiau et al. 2022): does a generator read anything outside Φ?"""
