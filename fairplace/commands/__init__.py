"""One module per ``fairplace`` sub-command (``HELP``, ``add_arguments``, ``run``)."""
