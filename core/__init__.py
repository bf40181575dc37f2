"""The shared core of toolreel: the model, the ref grammar, templates and the store.

It imports nothing from the gateway, recorder, templatizer or replayer.
"""
