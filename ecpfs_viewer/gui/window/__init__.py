"""The main window's shell: layout, actions and menus, dialogs, the start page."""
