/* in progress */ typedef int bk_placeholder_expr;
