"""Small widgets shared by the panels: banners, facts, tables, icons, colours."""
