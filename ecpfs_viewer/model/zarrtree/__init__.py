"""The generic Zarr hierarchy: node paths, documents, listing, chunks, array reads.

Importing it puts the guarded decode in zarr's and numcodecs' codec registries (guarded_decode):
every chunk zarr-python decodes for the model from then on is bounded by its size.
"""

from ecpfs_viewer.model.zarrtree.guarded_decode import install

install()
