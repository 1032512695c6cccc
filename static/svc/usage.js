// placeholder: filled by its own change
