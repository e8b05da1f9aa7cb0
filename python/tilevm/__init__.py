from ._tilevm import __version__
