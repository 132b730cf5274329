"""When each source was last refreshed, and from where: its table and the write an import or sync makes."""
