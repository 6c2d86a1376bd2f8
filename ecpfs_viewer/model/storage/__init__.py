"""Opening stores and every byte read from them: counted, capped, guarded, remote."""
