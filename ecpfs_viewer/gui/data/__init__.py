"""The data pane: array subsets as plots, images, histograms and tables."""
