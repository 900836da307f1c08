# Changes of <http://example.org/rooms>: sensor s1 is moved to the office at time 7.
PREFIX : <http://example.org/>
# @time 7
DELETE DATA { :s1 :in :kitchen } ;
INSERT DATA { :s1 :in :office }
