"""The `takt` command line: data on stdout, errors on stderr as one line with a non-zero exit."""
