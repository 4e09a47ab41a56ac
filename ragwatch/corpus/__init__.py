"""Documents to chunks: which files a path names (`files`), their text (`documents`, with `markup` for
HTML and DOCX), and the chunks an index is built from (`chunking`). Nothing here measures anything."""
