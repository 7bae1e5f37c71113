DROP TABLE title_key_rule;
