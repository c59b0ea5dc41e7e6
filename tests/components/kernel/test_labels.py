from components.kernel.labels import is_dns1035_label, is_label_value, is_qualified_name


def test_names_follow_kubernetes() -> None:
    """IsDNS1035Label / IsQualifiedName / IsValidLabelValue (k8s.io/apimachinery validation.go)."""
    assert is_dns1035_label("a-1") and not is_dns1035_label("1a")
    assert not is_dns1035_label("a\n") and not is_dns1035_label("a" * 64)
    assert is_qualified_name("example.com/a_b.c") and not is_qualified_name("/a")
    assert not is_qualified_name("Example.com/a") and not is_qualified_name("a/" + "b" * 64)
    assert is_label_value("") and is_label_value("a.b_c-d") and not is_label_value("a" * 64)
    assert not is_label_value("-a") and not is_label_value("a b")
