"""The run machinery: many cases, from the cache, in worker processes or in-process."""
