"""The comparison view (File > Compare With...) and the tuning dialog (Build > Tune...)."""
