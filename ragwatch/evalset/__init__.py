"""The evaluation set: questions an LLM writes from chunks (`synthetic`) and the filters they pass
(`filters`), labelled sets imported from files (`imported`), reference answers written for imported
questions (`references`), a log's answers as the set (`logged`), the set assembled from its sources
(`assemble`), and written out (`export`)."""
