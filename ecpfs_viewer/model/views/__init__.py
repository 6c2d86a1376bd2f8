"""Qt-free view models that the GUI's pages render: node info, plots, tables, tree rows."""
