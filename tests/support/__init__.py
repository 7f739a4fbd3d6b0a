"""Helpers the tests share: fixtures' servers, reference engines, read guards."""
