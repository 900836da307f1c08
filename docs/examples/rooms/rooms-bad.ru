# rooms.ru with a malformed record before it: rejected, the run goes on.
PREFIX : <http://example.org/>
# @time 4
INSERT DATA { :s2 :in }
# @time 7
DELETE DATA { :s1 :in :kitchen } ;
INSERT DATA { :s1 :in :office }
