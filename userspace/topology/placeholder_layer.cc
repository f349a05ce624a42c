// Placeholder so the layer library has a source; delete once the layer has real files.
