"""The build dialog: the form, its preview and the build's progress."""
