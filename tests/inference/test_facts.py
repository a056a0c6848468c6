"""What a Function's code says is read once (gradverify.inference.reading.facts) and a
call's receiver is a module by one answer (gradverify.target.syntax.is_module)."""

from __future__ import annotations

import ast

from gradverify.inference.reading.facts import code_facts
from gradverify.target.loading import load_target
from gradverify.target.syntax import is_module


def test_the_prose_around_a_function_is_read_once_and_only_its_own() -> None:
    commented = load_target("tests.functions.intent:CommentedEstimator")
    facts = code_facts(commented)

    assert facts is code_facts(load_target("tests.functions.intent:CommentedEstimator"))
    assert any(comment.startswith("STE:") for comment in facts.comments)
    assert facts.module_doc is None  # tests/functions/intent.py holds many Functions
    alone = code_facts(load_target("tests.functions.intent_alone:Quantize"))
    assert alone.module_doc is not None and "STE" in alone.module_doc


def test_a_receiver_is_a_module_by_the_root_of_its_attribute_chain() -> None:
    def receiver(code: str) -> ast.AST:
        call = ast.parse(code, mode="eval").body
        assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
        return call.func.value

    assert is_module(receiver("torch.linalg.solve(A, b)"))
    assert is_module(receiver("F.softplus(x)"))
    assert is_module(receiver("np.zeros(n)"))
    assert not is_module(receiver("x.gather(-1, index)"))
    assert not is_module(receiver("self.weight.new_zeros(n)"))
