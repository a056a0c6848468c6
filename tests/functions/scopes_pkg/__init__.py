"""Functions where a package keeps them besides its top level: in a class body, and built
inside a function (gradverify.spec.definitions)."""
