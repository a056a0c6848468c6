"""The target: a Function, function or custom op named by the user, loaded and described."""
