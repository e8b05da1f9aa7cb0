layout
