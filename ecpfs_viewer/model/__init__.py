"""Qt-free model layer: stores, hierarchy, ecpfs semantics, validation, chunks, build, search.

Nothing in this package may import Qt or pyqtgraph (tests/model/test_qt_free.py enforces it).
"""
